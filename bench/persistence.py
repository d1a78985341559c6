"""Persistence benchmark: committed writes per second, group commit versus one transaction each.

Every write is one unit holding one INSERT into the `events` outbox table. Two ways to commit the
same `--writes` writes, each on a fresh database (a new SQLite file, or a new Postgres schema
created through the backend's `schema=` URL parameter and dropped afterwards):

* group commit: `--writers` concurrent writers, each sending its share of the writes one after
  another as `Commit` messages to a single `PersistenceActor` and awaiting each reply. The actor
  commits whatever queued up during the previous commit as one transaction; the average batch is
  its `units / commits` counters;
* one transaction per write: a single writer awaiting `database.write([unit])` for each write.

Throughput is writes divided by the wall time from the first write to the last reply; a reply
means the write is durable (SQLite `synchronous=FULL`, Postgres default `synchronous_commit`).
The row count is checked after each run. With `--runs`, the cases take turns and the median
run is printed with the lowest and highest, since a shared disk's fsync time drifts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from mps.actors.persistence import Commit, PersistenceActor
from mps.actors.runtime import ask, stop
from mps.persistence.database import Database, open_database
from mps.persistence.statements import Statement, insert

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/mps_test"

Opener = Callable[[], contextlib.AbstractAsyncContextManager[Database]]


@dataclass(frozen=True)
class Run:
    writes_per_second: float
    average_batch: float


def event(n: int) -> Statement:
    return insert(
        "events",
        {
            "id": f"evt_bench_{n}",
            "company_id": "cmp_bench",
            "mode": "test",
            "type": "bench.write",
            "created_at": datetime.now(UTC).isoformat(),
            "data": "{}",
        },
    )


def shares(total: int, parts: int) -> list[int]:
    """Split `total` into `parts` near-equal whole numbers."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


# Databases ----------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def opened(url: str) -> AsyncIterator[Database]:
    database = open_database(url)
    await database.open()
    try:
        yield database
    finally:
        await database.close()


@contextlib.asynccontextmanager
async def sqlite_database() -> AsyncIterator[Database]:
    with tempfile.TemporaryDirectory(prefix="mps-bench-") as directory:
        async with opened(f"sqlite:///{Path(directory) / 'bench.db'}") as database:
            yield database


def postgres_opener(url: str) -> Opener:
    @contextlib.asynccontextmanager
    async def postgres_database() -> AsyncIterator[Database]:
        schema = f"bench_{secrets.token_hex(4)}"
        async with opened(f"{url}?schema={schema}") as database:
            try:
                yield database
            finally:
                await database.fetch(f'DROP SCHEMA "{schema}" CASCADE')

    return postgres_database


# Ways to commit -----------------------------------------------------------------------------


async def group_commit(database: Database, writes: int, writers: int) -> Run:
    actor = PersistenceActor.launch(database)
    ids = iter(range(writes))

    async def writer(share: int) -> None:
        for _ in range(share):
            await ask(actor.actor_ref, Commit((event(next(ids)),)))

    start = time.perf_counter()
    await asyncio.gather(*(writer(share) for share in shares(writes, writers)))
    elapsed = time.perf_counter() - start
    await stop(actor.actor_ref)
    return Run(writes / elapsed, actor.units / actor.commits)


async def one_transaction_per_write(database: Database, writes: int) -> Run:
    start = time.perf_counter()
    for n in range(writes):
        [outcome] = await database.write([(event(n),)])
        if isinstance(outcome, BaseException):
            raise outcome
    elapsed = time.perf_counter() - start
    return Run(writes / elapsed, 1.0)


async def measure(
    open_db: Opener, commit: Callable[[Database], Awaitable[Run]], writes: int
) -> Run:
    async with open_db() as database:
        run = await commit(database)
        committed = await database.fetchval("SELECT count(*) FROM events")
    assert committed == writes, f"{committed} rows committed, expected {writes}"
    return run


# Report -------------------------------------------------------------------------------------


Results = dict[tuple[str, str], list[Run]]


async def collect(backends: dict[str, Opener], writes: int, writers: int, runs: int) -> Results:
    modes: dict[str, Callable[[Database], Awaitable[Run]]] = {
        f"group commit, {writers} writers": lambda db: group_commit(db, writes, writers),
        "one transaction per write, 1 writer": lambda db: one_transaction_per_write(db, writes),
    }
    results: Results = {(backend, mode): [] for backend in backends for mode in modes}
    # Round-robin, so that a slow spell of the disk does not land on one case only.
    for _ in range(runs):
        for backend, mode in results:
            results[backend, mode].append(await measure(backends[backend], modes[mode], writes))
    return results


def print_table(results: Results, writes: int, runs: int) -> None:
    print(f"committed writes per second, {writes} writes of one INSERT into events each,")
    print(f"median of {runs} run(s) with the lowest and highest")
    print(f"  {'backend':<9} {'mode':<36} {'writes/s':>9} {'min':>7} {'max':>7} {'avg batch':>10}")
    for (backend, mode), found in results.items():
        rates = [run.writes_per_second for run in found]
        batch = statistics.mean(run.average_batch for run in found)
        print(
            f"  {backend:<9} {mode:<36} {statistics.median(rates):>9.0f} "
            f"{min(rates):>7.0f} {max(rates):>7.0f} {batch:>10.1f}"
        )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=5_000, help="writes per run")
    parser.add_argument("--writers", type=int, default=64, help="concurrent group-commit writers")
    parser.add_argument("--runs", type=int, default=1, help="runs per case; the median is shown")
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL, help="server and database")
    return parser.parse_args()


def backends(choice: str, postgres_url: str) -> dict[str, Opener]:
    available: dict[str, Opener] = {
        "sqlite": sqlite_database,
        "postgres": postgres_opener(postgres_url),
    }
    return available if choice == "both" else {choice: available[choice]}


def main() -> None:
    args = parse_args()
    chosen = backends(args.backend, args.postgres_url)
    results = asyncio.run(collect(chosen, args.writes, args.writers, args.runs))
    print_table(results, args.writes, args.runs)


if __name__ == "__main__":
    main()
