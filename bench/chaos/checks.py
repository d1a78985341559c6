"""The invariants, checked once the workload has ended and the cluster is whole again: what
was acknowledged against what is stored (by the key written into each resource), one result
per Idempotency-Key, no over-refund and one charge per payment, balances against movements
and the service's own reconciliation, and every listed event delivered and signed.

`check` waits on facts (money settled, events arrived) for up to `--settle` seconds each, then
records each finding in the report as a violation; it raises only when the service cannot be
read at all."""

from __future__ import annotations

import asyncio
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import orjson

from bench.chaos.client import Client
from bench.chaos.options import Options
from bench.chaos.report import Report
from bench.chaos.world import Company, Delivery, World
from mps.persistence.postgres import PostgresDatabase
from mps.persistence.queries import ledger as ledger_queries
from mps.persistence.queries.reconciliation import mismatches
from mps.webhooks import SignatureError, verify_signature

ACCOUNTS = ("availableMinor", "pendingMinor", "reservedMinor")


class _Db:
    """Queries on the run's schema (the URL's `?schema=` part), each on a connection of its own."""

    def __init__(self, url: str) -> None:
        self.url, self.schema = url.split("?schema=", 1)

    async def fetch(self, sql: str, *params: Any) -> list[asyncpg.Record]:
        conn = await asyncpg.connect(self.url, server_settings={"search_path": self.schema})
        try:
            return await conn.fetch(sql, *params)
        finally:
            await conn.close()


async def _until(
    condition: Callable[[], Awaitable[bool]], within: float, every: float = 0.5
) -> bool:
    deadline = time.monotonic() + within
    while True:
        if await condition():
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(every)


async def check(
    client: Client, world: World, report: Report, options: Options, database_url: str
) -> None:
    """Every check, in order; `database_url` names the run's schema (`...?schema=name`)."""
    db = _Db(database_url)
    ids = [c.id for c in world.companies]

    async def settled() -> bool:
        rows = await db.fetch(
            "SELECT (SELECT count(*) FROM refunds WHERE status = 'PENDING' "
            "AND company_id = ANY($1)) + (SELECT count(*) FROM payouts WHERE status IN "
            "('PENDING', 'IN_TRANSIT') AND company_id = ANY($1)) AS open",
            ids,
        )
        return int(rows[0]["open"]) == 0

    if not await _until(settled, options.settle):
        report.violate("money settles", f"refunds or payouts still open after {options.settle}s")
    _check_keys(world, report)
    await _check_stored(client, world, report, db)
    await _check_refunds_and_charges(report, db, ids)
    await _check_money(client, world, report, database_url)
    await _check_events(client, world, report, options)


def _check_keys(world: World, report: Report) -> None:
    """One result per key: every 2xx answer to a key names the same resource."""
    for record in world.keys.values():
        if record.successes():
            report.acknowledged[record.kind] += 1
        results = {a.result for a in record.successes()}
        if len(results) > 1:
            report.violate(
                "one result per Idempotency-Key",
                f"{record.kind} key {record.key} answered {len(results)} different results",
                *(f"{a.brief()} -> {a.result}" for a in record.answers),
            )


async def _check_stored(client: Client, world: World, report: Report, db: _Db) -> None:
    """Acknowledged creates, refunds and payouts == stored, by the key written into each."""
    ids = [c.id for c in world.companies]
    stored: dict[tuple[str, str], list[str]] = defaultdict(list)
    for row in await db.fetch(
        "SELECT company_id, id, metadata FROM payments WHERE company_id = ANY($1) "
        "AND link_payment_id IS NULL",
        ids,
    ):
        key = orjson.loads(row["metadata"] or "{}").get("chaosKey")
        stored[(row["company_id"], key or f"(no key) {row['id']}")].append(row["id"])
    for row in await db.fetch(
        "SELECT company_id, id, reason AS key FROM refunds WHERE company_id = ANY($1) "
        "UNION ALL SELECT company_id, id, description FROM payouts WHERE company_id = ANY($1)",
        ids,
    ):
        stored[(row["company_id"], row["key"] or f"(no key) {row['id']}")].append(row["id"])

    for (company, key), found in stored.items():
        record = world.keys.get((company, key))
        if record is None:
            report.violate("acknowledged writes == stored", f"stored {found} for no request")
            continue
        if len(found) > 1:
            report.violate(
                "acknowledged writes == stored",
                f"{record.kind} key {key} stored {len(found)} times: {found}",
                *(a.brief() for a in record.answers),
            )
        if record.successes():
            acked = record.successes()[0].body.get("id")
            if acked not in found:
                report.violate(
                    "acknowledged writes == stored",
                    f"{record.kind} key {key} acknowledged {acked}, stored {found}",
                )
        elif record.resolved:
            report.violate(
                "acknowledged writes == stored",
                f"{record.kind} key {key} refused ({record.final.brief() if record.final else ''})"
                f" but stored {found}",
                *(a.brief() for a in record.answers),
            )
    for (company, key), record in world.keys.items():
        if record.kind == "pay" or not record.successes():
            continue
        if (company, key) not in stored:
            report.violate(
                "acknowledged writes == stored",
                f"{record.kind} key {key} acknowledged {record.successes()[0].body.get('id')}, "
                "nothing stored",
                *(a.brief() for a in record.answers),
            )

    # Every acknowledged payment readable from every node.
    semaphore = asyncio.Semaphore(8)

    async def read(company: Company, payment_id: str, node: int) -> None:
        async with semaphore:
            for _ in range(20):
                answer = await client.payment(payment_id, node, token=company.token)
                if answer.status not in (0, 503):
                    break
                await asyncio.sleep(0.5)
            if answer.status != 200 or answer.body.get("id") != payment_id:
                report.violate(
                    "acknowledged creates stored",
                    f"acknowledged payment {payment_id} not readable from node{node + 1}",
                    answer.brief(),
                )

    await asyncio.gather(
        *(
            read(company, payment_id, node)
            for company in world.companies
            for payment_id in company.created
            for node in range(len(client.urls))
        )
    )


async def _check_refunds_and_charges(report: Report, db: _Db, ids: list[str]) -> None:
    for row in await db.fetch(
        "SELECT p.id, p.amount_minor, p.amount_refunded_minor, "
        "COALESCE(SUM(r.amount_minor) FILTER (WHERE r.status IN ('PENDING', 'COMPLETED')), 0) "
        "AS held, COALESCE(SUM(r.amount_minor) FILTER (WHERE r.status = 'COMPLETED'), 0) AS done "
        "FROM payments p LEFT JOIN refunds r ON r.payment_id = p.id "
        "WHERE p.company_id = ANY($1) GROUP BY p.id, p.amount_minor, p.amount_refunded_minor",
        ids,
    ):
        if row["held"] > row["amount_minor"] or row["amount_refunded_minor"] > row["amount_minor"]:
            report.violate(
                "no over-refund",
                f"payment {row['id']} of {row['amount_minor']}: refunds completed or pending "
                f"{row['held']}, refunded {row['amount_refunded_minor']}",
            )
        if row["done"] != row["amount_refunded_minor"]:
            report.violate(
                "no over-refund",
                f"payment {row['id']}: completed refunds {row['done']}, but the payment says "
                f"{row['amount_refunded_minor']} refunded",
            )
    for row in await db.fetch(
        "SELECT source_id, count(*) AS n FROM ledger_transactions WHERE type = 'payment' "
        "AND company_id = ANY($1) GROUP BY source_id HAVING count(*) > 1",
        ids,
    ):
        report.violate("one charge per payment", f"payment {row['source_id']} charged {row['n']}x")
    for row in await db.fetch(
        "SELECT p.id FROM payments p WHERE p.company_id = ANY($1) AND p.paid_at IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM ledger_transactions t WHERE t.type = 'payment' "
        "AND t.source_id = p.id)",
        ids,
    ):
        report.violate("one charge per payment", f"paid payment {row['id']} has no credit")


async def _check_money(client: Client, world: World, report: Report, database_url: str) -> None:
    """The balance the API shows against the movements it lists, then the service's own
    reconciliation over the whole schema."""
    for company in world.companies:
        for attempt in range(3):  # a movement committing between the two reads: read again
            shown = await _balances(client, company)
            summed: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(ACCOUNTS, 0))
            movements = await client.rows("/merchant/balance/transactions", 0, token=company.token)
            for movement in movements:
                for account, amount in movement["changes"].items():
                    summed[movement["currency"]][account] += int(amount)
            zero = dict.fromkeys(ACCOUNTS, 0)
            every = set(shown) | set(summed)
            differ = [c for c in every if shown.get(c, zero) != summed.get(c, zero)]
            if not differ or attempt == 2:
                break
            await asyncio.sleep(1.0)
        for currency in sorted(differ):
            a, b = shown.get(currency, zero), summed.get(currency, zero)
            if a != b:
                report.violate(
                    "money reconciles",
                    f"{company.id} {currency}: balance {a} but movements sum to {b}",
                )
    database = PostgresDatabase(database_url)
    await database.open()
    try:
        for mismatch in await mismatches(database, None):
            report.violate("money reconciles", f"reconciliation: {mismatch}")
        total = await ledger_queries.zero_sum(database)
        if total != 0:
            unbalanced = await ledger_queries.unbalanced(database)
            report.violate("money reconciles", f"the ledger sums to {total}: {unbalanced}")
    finally:
        await database.close()


async def _balances(client: Client, company: Company) -> dict[str, dict[str, int]]:
    answer = await client.read("/merchant/balance", 0, token=company.token)
    return {b["currency"]: {k: int(b[k]) for k in ACCOUNTS} for b in answer.body["data"]}


def _deliveries(
    world: World,
) -> tuple[dict[int, dict[str, bytes]], list[tuple[Delivery, SignatureError]]]:
    """The deliveries whose signature holds, by company index and event id; and the others,
    each with why its signature failed."""
    valid: dict[int, dict[str, bytes]] = defaultdict(dict)
    forged: list[tuple[Delivery, SignatureError]] = []
    for delivery in world.received:
        company = world.companies[delivery.company]
        try:
            verify_signature(delivery.body, delivery.signature, company.secret)
        except SignatureError as exc:
            forged.append((delivery, exc))
            continue
        valid[delivery.company][orjson.loads(delivery.body)["id"]] = delivery.body
    return valid, forged


async def _check_events(client: Client, world: World, report: Report, options: Options) -> None:
    """Every listed event (after the endpoint existed) delivered, signed; sequences gap-free."""
    listed: dict[int, list[dict[str, Any]]] = {}

    async def all_arrived() -> bool:
        for company in world.companies:
            listed[company.index] = await client.rows(
                "/merchant/events", company.index, token=company.token
            )
        got, _ = _deliveries(world)
        return all(
            e["id"] in got[c]
            for c, events in listed.items()
            for e in events
            if e["id"] not in world.companies[c].baseline
        )

    await _until(all_arrived, options.settle, every=2.0)
    got, forged = _deliveries(world)
    report.deliveries = len(world.received)
    for delivery, exc in forged:
        report.violate(
            "events delivered",
            f"a delivery to company {delivery.company} failed its signature: {exc}",
            delivery.body[:200].decode(errors="replace"),
        )
    for index, events in listed.items():
        company = world.companies[index]
        by_id = {e["id"]: e for e in events}
        report.events_listed += len(events)
        sequences = sorted(e["sequence"] for e in events)
        if sequences != list(range(1, len(sequences) + 1)):
            missing = sorted(set(range(1, (sequences or [0])[-1] + 1)) - set(sequences))
            repeated = [s for s, n in Counter(sequences).items() if n > 1]
            report.violate(
                "events delivered",
                f"company {company.id}: sequences of {len(sequences)} events are not 1..n",
                f"missing {missing[:20]}, repeated {repeated[:20]}",
            )
        for event in events:
            if event["id"] in company.baseline:
                continue
            body = got[index].get(event["id"])
            if body is None:
                report.violate(
                    "events delivered",
                    f"{event['type']} {event['id']} (sequence {event['sequence']}) of "
                    f"{company.id} not delivered within {options.settle}s",
                )
                continue
            report.events_delivered += 1
            if orjson.loads(body).get("sequence") != event["sequence"]:
                report.violate(
                    "events delivered",
                    f"{event['id']} delivered with sequence {orjson.loads(body).get('sequence')}"
                    f", listed with {event['sequence']}",
                )
        for event_id in set(got[index]) - set(by_id):
            report.violate("events delivered", f"{event_id} delivered but not listed")
