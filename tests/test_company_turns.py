"""The company actor's turns never wait: every message is decided from memory and its commit
handed to the writer, audited ones included (mps.actors.company.audit), so one company's burst
shares group commits and its audit chain still verifies."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.actors.company import (
    AddMember,
    Balances,
    CompanyActor,
    CreateCompany,
    OpenSession,
    RecordAudit,
    RequestApproval,
    SetPolicy,
    UpdateSettings,
    VoteOnApproval,
)
from mps.actors.context import ActorContext
from mps.actors.directory import ActorDirectory
from mps.actors.runtime import ActorRef, ask, stop
from mps.bootstrap import Overrides
from mps.domain import audit as chain
from mps.domain.approvals import ApprovalRequest, Policy
from mps.domain.clock import iso, utcnow
from mps.errors import Unavailable
from mps.persistence.approval_store import VotesShort, approved_by_votes
from mps.persistence.database import Database, Fences, IntegrityConflict, UnitOutcome
from mps.persistence.queries.team import audit_chain
from mps.persistence.statements import WriteUnit
from tests.actors import KEYRING, PUBLIC_URL
from tests.conftest import Clock
from tests.fakes import RecordingDatabase, RefusingDatabase, wait_until
from tests.helpers import sign_up
from tests.money import ACCOUNT, paid_payment

pytestmark = pytest.mark.both_backends

PATIENCE = 30.0
VOTERS = ("ada@example.com", "bea@example.com")
REFUND_SCOPES = frozenset({"refunds:write"})


class SlowRecordingDatabase(RecordingDatabase):
    """Records each group commit's units, every commit taking `delay` longer (a distant
    database), so what queues up meanwhile shows as one commit or many."""

    def __init__(self, real: Database, delay: float) -> None:
        super().__init__(real)
        self.delay = delay
        self.batches: list[Sequence[WriteUnit]] = []

    async def write(
        self, units: Sequence[WriteUnit], fences: Fences | None = None
    ) -> list[UnitOutcome]:
        await asyncio.sleep(self.delay)
        outcomes = await super().write(units, fences)
        self.batches.append(list(units))
        return outcomes


@asynccontextmanager
async def _launched(
    context: ActorContext, company_id: str, refusing: RefusingDatabase | None = None
) -> AsyncIterator[CompanyActor]:
    """A company's actor launched on `context`, stopped when the block ends; the writer is let
    go first (`refusing`, if given), so that a test that failed while holding it still ends."""
    actor = CompanyActor.launch(company_id, context, KEYRING, public_url=PUBLIC_URL)
    try:
        yield actor
    finally:
        if refusing is not None:
            refusing.hold.set()
        await stop(actor.actor_ref)


def _records(action: str) -> Callable[[WriteUnit], bool]:
    return lambda unit: any(action in st.params for st in unit if "audit_entries" in st.sql)


def _create() -> CreateCompany:
    return CreateCompany(name="Acme Ltd", owner_email="owner@example.com", owner_name="Owner")


def _record(action: str) -> RecordAudit:
    return RecordAudit(action, ("card", "card_1"), {})


async def _stored_chain(database: Database, company_id: str) -> tuple[chain.Verdict, list[str]]:
    verdict, actions = chain.Verdict(), []
    async for entries in audit_chain(database, company_id):
        verdict = chain.verify(entries, verdict)
        actions += [e.action for e in entries]
    return verdict, actions


async def test_twenty_concurrent_payouts_share_group_commits_and_their_audit_chain_verifies(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], clock: Clock
) -> None:
    # given a company with funds and a bank account, on a database 50 ms away
    recorded: list[SlowRecordingDatabase] = []

    def wrap(real: Database) -> Database:
        recorded.append(SlowRecordingDatabase(real, delay=0.05))
        return recorded[0]

    client: TestClient[Any, Any] = await aiohttp_client(
        make_app(Overrides(clock=clock, wrap_database=wrap))
    )
    member = await sign_up(client)
    await paid_payment(client, member, "100000")
    account = await client.post(
        "/api/v1/merchant/bank-accounts", json=ACCOUNT, headers=member.headers
    )
    account_id = (await account.json())["id"]
    db = recorded[0]

    # when 20 payouts are asked for at once
    responses = await asyncio.gather(
        *(
            client.post(
                "/api/v1/merchant/payouts",
                json={"amountMinor": "100", "currency": "USD", "bankAccountId": account_id},
                headers=member.headers,
            )
            for _ in range(20)
        )
    )

    # then every one is created, their audited units were written in fewer group commits
    # than there are payouts, and the trail's chain verifies
    assert [r.status for r in responses] == [201] * 20
    holding = [
        batch
        for batch in db.batches
        if any(st.sql.startswith("INSERT INTO payouts") for unit in batch for st in unit)
    ]
    assert sum(
        1 for batch in holding for unit in batch for st in unit
        if st.sql.startswith("INSERT INTO payouts")
    ) == 20  # fmt: skip
    assert len(holding) < 20
    verify = await client.get("/api/v1/team/audit/verify", headers=member.headers)
    verdict = await verify.json()
    assert verdict["valid"] is True, verdict
    entries = await client.get(
        "/api/v1/team/audit", params={"action": "payout.created"}, headers=member.headers
    )
    assert len((await entries.json())["data"]) == 20


async def test_an_audited_unit_linked_after_a_refused_one_is_linked_again_and_the_chain_verifies(
    database: Database, refusing: RefusingDatabase, context: ActorContext
) -> None:
    # given a company whose writer is held, with an audited unit in flight that will be refused
    async with _launched(context, "cmp_refused", refusing) as actor:
        ref = actor.actor_ref
        await ask(ref, _create())
        await ask(ref, _record("card.before"))
        refusing.refuse = _records("card.refused")
        refusing.hold.clear()
        refused = asyncio.ensure_future(ask(ref, _record("card.refused")))
        await wait_until(lambda: refusing.waiting_writes == 1)

        # when two more audited units are linked after it while it is in flight, and the
        # writer goes on
        kept = [asyncio.ensure_future(ask(ref, _record(f"card.kept{i}"))) for i in (1, 2)]
        await wait_until(lambda: actor.state.audit_in_flight == 3)
        refusing.hold.set()

        # then the refused one is answered its refusal, the two behind it land, linked again
        # onto the chain without it, and the stored chain verifies, without a reload
        with pytest.raises(IntegrityConflict):
            await asyncio.wait_for(refused, PATIENCE)
        await asyncio.wait_for(asyncio.gather(*kept), PATIENCE)
        verdict, actions = await _stored_chain(database, "cmp_refused")
        assert verdict.valid, verdict
        assert actions == ["card.before", "card.kept1", "card.kept2"]
        assert actor.state.stale is False
        assert actor.state.audit_head == verdict.head
        await ask(ref, _record("card.after"))
        verdict, actions = await _stored_chain(database, "cmp_refused")
        assert verdict.valid and actions[-1] == "card.after"


async def test_the_actor_reloads_its_audit_head_after_an_audited_commit_of_unknown_outcome(
    database: Database,
    refusing: RefusingDatabase,
    companies: ActorDirectory[str, CompanyActor],
) -> None:
    # given a company whose audited commit lands but is not acknowledged
    await companies.ask("cmp_unknown", _create())
    refusing.lose_ack = lambda _unit: True
    with pytest.raises(Unavailable):
        await companies.ask("cmp_unknown", _record("card.unknown"))

    # when the next audited act comes
    await companies.ask("cmp_unknown", _record("card.next"))

    # then it is linked after what storage holds: the chain verifies, both entries on it
    verdict, actions = await _stored_chain(database, "cmp_unknown")
    assert verdict.valid, verdict
    assert actions == ["card.unknown", "card.next"]


async def test_the_company_actor_answers_its_next_message_while_settings_and_a_session_commit(
    refusing: RefusingDatabase, context: ActorContext
) -> None:
    # given a company whose writer is held
    async with _launched(context, "cmp_turns", refusing) as actor:
        ref = actor.actor_ref
        owner = await ask(ref, _create())
        refusing.hold.clear()

        # when two settings changes and a session are asked for, and then the balances
        first = asyncio.ensure_future(ask(ref, UpdateSettings("test", {"settlement_delay_sec": 5})))
        second = asyncio.ensure_future(
            ask(ref, UpdateSettings("test", {"settlement_delay_sec": 7}))
        )
        session = asyncio.ensure_future(ask(ref, OpenSession(owner, "test")))
        balances = await asyncio.wait_for(ask(ref, Balances("test")), PATIENCE)

        # then the balances are answered while the three commits wait for the writer, and
        # once it goes on, the second change was decided against the first
        assert balances is not None
        assert not first.done() and not second.done() and not session.done()
        refusing.hold.set()
        one, two = await asyncio.wait_for(asyncio.gather(first, second), PATIENCE)
        assert (one.version, two.version) == (2, 3)
        assert two.settings["test"].settlement_delay_sec == 7
        session_id, _expires = await asyncio.wait_for(session, PATIENCE)
        assert session_id.startswith("ses_")


async def _refund_needing_two_approvals(ref: ActorRef[CompanyActor]) -> ApprovalRequest:
    """A new company's PENDING refund request under a policy that needs two approvals."""
    owner = await ask(ref, _create())
    await ask(ref, SetPolicy(Policy("refund.create", True, {"USD": 1000}, 2)))
    payload = {"paymentId": "pay_1", "amountMinor": "5000", "reason": None}
    request: ApprovalRequest = await ask(
        ref, RequestApproval("test", "refund.create", "USD", 5000, payload, owner)
    )
    return request


async def test_a_vote_counted_on_top_of_a_refused_vote_never_approves_a_vote_short(
    refusing: RefusingDatabase, context: ActorContext, database: Database
) -> None:
    # given a request that needs two approvals, and two voters
    async with _launched(context, "cmp_votes", refusing) as actor:
        ref = actor.actor_ref
        request = await _refund_needing_two_approvals(ref)
        first, second = [await ask(ref, AddMember(e, None, "role_admin")) for e in VOTERS]

        # when the first vote is refused whole at the writer after the second was decided on
        # top of it (both in memory before either landed)
        refusing.refuse = lambda unit: any(first in st.params for st in unit)
        refusing.hold.clear()
        one = asyncio.ensure_future(
            ask(ref, VoteOnApproval("test", request.id, first, REFUND_SCOPES, "approve"))
        )
        two = asyncio.ensure_future(
            ask(ref, VoteOnApproval("test", request.id, second, REFUND_SCOPES, "approve"))
        )
        await wait_until(lambda: refusing.waiting_writes > 0)
        refusing.hold.set()
        answers = await asyncio.wait_for(asyncio.gather(one, two, return_exceptions=True), PATIENCE)

        # then the second vote, which alone would have approved, is refused as well (told to
        # retry), and storage holds the request PENDING with no vote: never approved a vote
        # short
        assert isinstance(answers[0], IntegrityConflict), answers
        assert isinstance(answers[1], Unavailable) and answers[1].retry_after == 1, answers
        stored = await database.fetchrow(
            "SELECT status FROM approval_requests WHERE id = $1", request.id
        )
        assert stored is not None and stored["status"] == "PENDING"
        votes = await database.fetch(
            "SELECT user_id FROM approval_votes WHERE request_id = $1", request.id
        )
        assert votes == []


async def test_a_request_is_approved_in_storage_only_with_the_approving_votes_it_needs(
    context: ActorContext, database: Database
) -> None:
    # given a request that needs two approvals, with one approving vote stored
    async with _launched(context, "cmp_guard") as actor:
        ref = actor.actor_ref
        request = await _refund_needing_two_approvals(ref)
        voter = await ask(ref, AddMember(VOTERS[0], None, "role_admin"))
        await ask(ref, VoteOnApproval("test", request.id, voter, REFUND_SCOPES, "approve"))

        # when storage is asked to approve it on two votes, then on one
        now = iso(utcnow())
        with pytest.raises(VotesShort):
            await context.commit(approved_by_votes("cmp_guard", request.id, now, 2))
        await context.commit(approved_by_votes("cmp_guard", request.id, now, 1))

        # then only the second landed
        stored = await database.fetchrow(
            "SELECT status FROM approval_requests WHERE id = $1", request.id
        )
        assert stored is not None and stored["status"] == "APPROVED"
