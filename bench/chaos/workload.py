"""The clients: companies signed up through the real flow, then workers drawing operations
(creates, checkouts, refund bursts, payouts, reads) at random over every node until told to
stop. Each keyed request is kept under its key in the World for the checks; what must hold at
once (two 200s for one checkout, an acknowledged payment read as 404) is a violation here.

Every worker runs on the suite's one event loop; a worker's own error is reported as a
violation of the suite and the worker goes on."""

from __future__ import annotations

import asyncio
import math
import random
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bench.chaos.client import API, Answer, Client
from bench.chaos.options import Options
from bench.chaos.world import Company, Paid, World
from bench.load import TEST_CARD

BANK_ACCOUNT = {
    "accountHolderName": "Chaos Ltd",
    "accountNumber": "000123456789",
    "bankCode": "110000000",
    "currency": "USD",
    "country": "US",
}


async def sign_up(client: Client, index: int, hooks: str) -> Company:
    """Company `index`, signed up on one node (its code read from the dev mailbox), with a
    webhook endpoint for every event at `hooks`/index and a bank account; raises RuntimeError
    when a step is refused, since the run means nothing without its companies."""
    node = index % len(client.urls)
    email = f"chaos{index}-{secrets.token_hex(3)}@example.com"

    async def ok(status: int, method: str, route: str, **request: Any) -> dict[str, Any]:
        got = await client.send(method, route, node, **request)
        if got.status != status:
            msg = f"setup failed: {got.brief()} {got.body}"
            raise RuntimeError(msg)
        return got.body

    signup = await ok(
        201, "POST", "/auth/signup", body={"companyName": f"Chaos {index}", "email": email}
    )
    mail = await ok(200, "GET", "/dev/mailbox", params={"to": email})
    session = await ok(
        200,
        "POST",
        "/auth/otp/verify",
        body={"loginId": signup["loginId"], "code": mail["data"][0]["otp"]},
    )
    token = session["sessionToken"]
    endpoint = await ok(
        201,
        "POST",
        "/merchant/webhooks",
        token=token,
        body={"url": f"{hooks}/{index}", "events": ["*"]},
        key=f"setup-hook-{index}",
    )
    account = await ok(
        201,
        "POST",
        "/merchant/bank-accounts",
        token=token,
        body=BANK_ACCOUNT,
        key=f"setup-account-{index}",
    )
    company = Company(index, signup["companyId"], token, endpoint["secret"], account["id"], set())
    events = await client.rows("/merchant/events", node, token=token)
    company.baseline = {e["id"] for e in events}
    return company


@dataclass(frozen=True)
class _Keyed:
    """One keyed POST as a client means it: sent again unchanged to whichever node."""

    kind: str  # the KeyRecord's kind
    company: Company
    key: str
    route: str
    body: Any
    path: str | None = None  # the route filled in, when it is a template
    public: bool = False  # sent without the merchant's credential (checkout)


class Workload:
    """`run(worker)` for each worker; setting `stop` ends every worker after its operation."""

    def __init__(self, client: Client, world: World, options: Options) -> None:
        self.client = client
        self.world = world
        self.report = world.report
        self.nodes = options.nodes
        self.stop = asyncio.Event()
        self.options = options

    async def run(self, worker: int) -> None:
        rng = random.Random(self.options.seed * 1000 + worker)
        ops: list[tuple[str, Callable[[random.Random, str], Awaitable[None]], int]] = [
            ("create", self.create, 30),
            ("pay", self.pay, 25),
            ("refund burst", self.refund_burst, 10),
            ("payout", self.payout, 10),
            ("read", self.read, 25),
        ]
        n = 0
        while not self.stop.is_set():
            n += 1
            name, op, _ = rng.choices(ops, weights=[w for _, _, w in ops])[0]
            self.report.operations[name] += 1
            try:
                await op(rng, f"w{worker}-{n}")
            except Exception as exc:  # the suite's own fault: shown, and the worker goes on
                self.report.violate("suite", f"{name} raised {type(exc).__name__}: {exc}")
                await asyncio.sleep(0.5)

    def _company(self, rng: random.Random) -> Company:
        return rng.choice(self.world.companies)

    def _other(self, rng: random.Random, node: int) -> int:
        return (node + rng.randrange(1, self.nodes)) % self.nodes if self.nodes > 1 else node

    async def _send(self, request: _Keyed, node: int) -> Answer:
        """The request, answered in the end; every answer is kept under its key."""
        record = self.world.record(request.kind, request.company, request.key)
        answers = await self.client.keyed(
            request.route,
            node,
            path=request.path,
            token=None if request.public else request.company.token,
            body=request.body,
            key=request.key,
        )
        record.answers += answers
        return answers[-1]

    async def _again_elsewhere(
        self, rng: random.Random, chance: float, request: _Keyed, first: Answer
    ) -> None:
        """With `chance`, the client sends an answered request again, same key and body, to
        another node, as a client that missed the answer would."""
        if rng.random() < chance:
            self.report.operations["same-key retry"] += 1
            await self._send(request, self._other(rng, first.node))

    async def create(self, rng: random.Random, tag: str) -> None:
        company = self._company(rng)
        key = f"create-{tag}"
        amount = rng.randrange(10, 90) * 100
        body = {
            "amountMinor": str(amount),
            "currency": "USD",
            "description": "chaos",
            "customMetadata": {"chaosKey": key},
        }
        request = _Keyed("create", company, key, "/merchant/payments", body)
        node = rng.randrange(self.nodes)
        if rng.random() < 0.1:  # the same key to two nodes at once
            self.report.operations["same-key pair"] += 1
            first, _ = await asyncio.gather(
                self._send(request, node), self._send(request, self._other(rng, node))
            )
        else:
            first = await self._send(request, node)
        if first.status == 201:
            company.created.append(first.body["id"])
            company.pending.append((first.body["id"], first.body["reference"], amount))
            await self._again_elsewhere(rng, 0.25, request, first)
        else:
            self._unexpected("create", first, 201)

    async def pay(self, rng: random.Random, tag: str) -> None:
        company = self._company(rng)
        if not company.pending:
            await self.create(rng, tag)
            return
        payment_id, reference, amount = company.pending.pop(rng.randrange(len(company.pending)))
        path = f"{API}/checkout/{reference}/pay"
        node = rng.randrange(self.nodes)
        keys = [f"pay-{tag}"]
        if rng.random() < 0.15:  # clicked twice, the second landing on another node
            self.report.operations["double click"] += 1
            keys.append(f"pay-{tag}-again")
        clicks = [
            self._send(
                _Keyed(
                    "pay",
                    company,
                    key,
                    "/checkout/{reference}/pay",
                    {"card": TEST_CARD},
                    path=path,
                    public=True,
                ),
                target,
            )
            for key, target in zip(keys, [node, self._other(rng, node)], strict=False)
        ]
        answers = await asyncio.gather(*clicks)
        paid = [a for a in answers if a.status == 200]
        for answer in answers:
            if answer.status not in (200, 409):
                self._unexpected("pay", answer, 200, 409)
        if len(paid) > 1:
            self.report.violate(
                "one charge per payment",
                f"two checkouts of {payment_id} (two keys) both answered 200",
                *(
                    f"{key}: {a.brief()} -> {a.result}"
                    for key in keys
                    for a in self.world.keys[(company.id, key)].answers
                ),
            )
        if paid:
            company.paid.append(Paid(payment_id, amount))

    async def refund_burst(self, rng: random.Random, tag: str) -> None:
        """Three concurrent refunds of one paid payment on three nodes, together asking 135%
        of what remains: at most two can be made."""
        company = self._company(rng)
        open_ = [p for p in company.paid if p.amount - p.refunded >= 30]
        if not open_:
            await self.pay(rng, tag)
            return
        payment = rng.choice(open_)
        remaining = payment.amount - payment.refunded
        each = math.ceil(remaining * 1.35 / 3)
        node = rng.randrange(self.nodes)
        answers = await asyncio.gather(
            *(
                self._send(
                    _Keyed(
                        "refund",
                        company,
                        f"refund-{tag}-{i}",
                        "/merchant/refunds",
                        {
                            "paymentId": payment.id,
                            "amountMinor": str(each),
                            "reason": f"refund-{tag}-{i}",
                        },
                    ),
                    (node + i) % self.nodes,
                )
                for i in range(3)
            )
        )
        for answer in answers:
            if answer.status == 201:
                payment.refunded += each
            elif answer.status != 409:
                self._unexpected("refund", answer, 201, 409)

    async def payout(self, rng: random.Random, tag: str) -> None:
        company = self._company(rng)
        key = f"payout-{tag}"
        body = {
            "amountMinor": str(rng.randrange(1, 6) * 100),
            "currency": "USD",
            "bankAccountId": company.bank_account,
            "description": key,
        }
        request = _Keyed("payout", company, key, "/merchant/payouts", body)
        first = await self._send(request, rng.randrange(self.nodes))
        if first.status == 201:
            await self._again_elsewhere(rng, 0.3, request, first)
        elif first.status != 409:
            self._unexpected("payout", first, 201, 409)

    async def read(self, rng: random.Random, tag: str) -> None:
        company = self._company(rng)
        if not company.created:
            await self.create(rng, tag)
            return
        payment_id = rng.choice(company.created)
        answer = await self.client.payment(
            payment_id, rng.randrange(self.nodes), token=company.token
        )
        if answer.status == 404:
            self.report.violate(
                "acknowledged creates stored",
                f"acknowledged payment {payment_id} read as 404 during the run",
                answer.brief(),
            )
        elif answer.status not in (0, 200, 503):
            self._unexpected("read", answer, 200)

    def _unexpected(self, what: str, answer: Answer, *expected: int) -> None:
        if answer.status == 0 or answer.status >= 500:
            return  # no answer in the end (counted), or a 5xx already reported
        self.report.violate(
            "expected statuses",
            f"{what} answered {answer.status}, expected {' or '.join(map(str, expected))}",
            f"{answer.brief()} {answer.body.get('message', '')}",
        )
