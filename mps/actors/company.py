"""The company actor: one per company, serializing changes to its settings, members and keys.

It loads the company's snapshot and its members when activated and applies each command in
turn: decide from memory with pure rules, hand the commit (with its events and the request's
idempotency record) to the persistence actor, and only then adopt the new state and reply. A
command that fails leaves the in-memory state as it was.

A turn never awaits a read: whatever a command needs that the actor does not hold is read by
the caller before it asks (the key row a revoke shows, the stored response of an idempotency
key), so one merchant's traffic never queues behind database round trips.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any

import orjson

from mps.actors.context import ActorContext
from mps.actors.idempotency import IdempotencyRecord
from mps.actors.payment import Outcome, with_customer
from mps.actors.runtime import AsyncioActor, Detached
from mps.auth.api_keys import generate_key, parse_key
from mps.auth.keyring import Keyring
from mps.auth.scopes import OWNER_ROLE
from mps.auth.tokens import SESSION_TTL
from mps.domain import payments as rules
from mps.domain.clock import iso
from mps.domain.company import Company
from mps.domain.ids import new_id, payment_reference
from mps.domain.payments import NewPayment
from mps.errors import Conflict, FieldError, Forbidden, NotFound, ValidationFailed
from mps.persistence import company_store as store
from mps.persistence.database import IntegrityConflict
from mps.persistence.payment_store import customer_statements, event_statements, payment_insert
from mps.persistence.queries import companies
from mps.persistence.statements import Row, Statement

__all__ = [
    "AddMember",
    "ClaimKey",
    "CompanyActor",
    "CreateApiKey",
    "CreateCompany",
    "CreatePayment",
    "OpenSession",
    "ReleaseKey",
    "RevokeApiKey",
    "RevokeSession",
    "UpdateSettings",
]


@dataclass(frozen=True)
class CreateCompany:
    """Reply: the owner's user id."""

    name: str
    owner_email: str
    owner_name: str | None


@dataclass(frozen=True)
class AddMember:
    """Reply: the member's user id. Creates the user when the email has no account yet; 409
    when they are a member already. (Invitations accept through this.)"""

    email: str
    name: str | None
    role_id: str


@dataclass(frozen=True)
class OpenSession:
    """Reply: (session id, expiry). The user must be a member."""

    user_id: str
    mode: str


@dataclass(frozen=True)
class RevokeSession:
    session_id: str


@dataclass(frozen=True)
class CreateApiKey:
    """Reply: (the key's row as stored, the full key shown once)."""

    created_by: str
    creator_scopes: frozenset[str]
    name: str
    type: str
    mode: str
    scopes: tuple[str, ...]
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class RevokeApiKey:
    """Reply: the key's row after revocation. `key` is the row as the caller read it (404 before
    asking when there is none), so the turn can present the result without a read."""

    key: Row
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class CreatePayment:
    """Reply: an Outcome with the new PENDING payment and its payment.created event."""

    mode: str
    spec: NewPayment
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class ClaimKey:
    """Reply: None when the key is now in flight for the caller, who must look for a stored
    response (outside this actor) before running, and release the key when done; or an asyncio
    future to await while another request holds the key, then claim again."""

    key: str


@dataclass(frozen=True)
class ReleaseKey:
    """The request holding the key finished; wake whoever waits for it."""

    key: str


@dataclass(frozen=True)
class UpdateSettings:
    """Reply: the company after the change. `changes` are already validated field values."""

    mode: str
    changes: dict[str, Any]


class CompanyActor(AsyncioActor):
    def __init__(
        self, company_id: str, context: ActorContext, keyring: Keyring, public_url: str
    ) -> None:
        super().__init__()
        self.public_url = public_url
        self.company_id = company_id
        self.context = context
        self.keyring = keyring
        self.company: Company | None = None
        # user id -> role id: who may open a session, decided without a read.
        self.members: dict[str, str] = {}
        # Idempotency keys whose first request is still running, with a future its duplicates
        # wait on.
        self.in_flight: dict[str, asyncio.Future[None]] = {}

    def __str__(self) -> str:
        return f"CompanyActor({self.company_id})"

    async def on_activate(self) -> None:
        try:
            self.company = await companies.company(self.context.database, self.company_id)
        except NotFound:
            self.company = None
            return
        self.members = await companies.member_roles(self.context.database, self.company_id)

    def _require(self) -> Company:
        if self.company is None:
            raise NotFound("No such company")
        return self.company

    async def receive(self, message: Any) -> Any:
        match message:
            case CreateCompany():
                return await self._create(message)
            case AddMember():
                return await self._add_member(message)
            case OpenSession():
                return await self._open_session(message)
            case RevokeSession():
                return await self._revoke_session(message)
            case CreateApiKey():
                return await self._create_api_key(message)
            case RevokeApiKey():
                return await self._revoke_api_key(message)
            case ClaimKey(key=key):
                return self._claim_key(key)
            case ReleaseKey(key=key):
                waiter = self.in_flight.pop(key, None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(None)
                return None
            case CreatePayment():
                return await self._create_payment(message)
            case UpdateSettings():
                return await self._update_settings(message)
        msg = f"CompanyActor does not understand {type(message).__name__}"
        raise TypeError(msg)

    async def _create(self, command: CreateCompany) -> str:
        if self.company is not None:
            msg = "company already exists"
            raise RuntimeError(msg)
        now = iso(self.context.clock())
        company = Company(id=self.company_id, name=command.name, version=1, created_at=now)
        # A fresh id is harmless when the email already has an account: that user is kept, and
        # the membership names whichever user holds the email.
        statements = [
            store.company_insert(company),
            *store.membership(
                company.id, new_id("usr"), command.owner_email, command.owner_name, OWNER_ROLE, now
            ),
        ]
        rows = await self.context.commit(*statements)
        owner: str = rows[-1][0]["user_id"]
        self.company = company
        self.members = {owner: OWNER_ROLE}
        return owner

    async def _add_member(self, command: AddMember) -> str:
        self._require()
        now = iso(self.context.clock())
        statements = store.membership(
            self.company_id, new_id("usr"), command.email, command.name, command.role_id, now
        )
        try:
            rows = await self.context.commit(*statements)
        except IntegrityConflict as exc:
            raise Conflict("That person is a member already", code="already_member") from exc
        user_id: str = rows[-1][0]["user_id"]
        self.members[user_id] = command.role_id
        return user_id

    async def _open_session(self, command: OpenSession) -> tuple[str, Any]:
        self._require()
        if command.user_id not in self.members:
            raise Forbidden("You are not a member of this company", code="not_a_member")
        now = self.context.clock()
        session_id = new_id("ses")
        expires_at = now + SESSION_TTL
        await self.context.commit(
            store.session_insert(
                {
                    "id": session_id,
                    "user_id": command.user_id,
                    "company_id": self.company_id,
                    "mode": command.mode,
                    "created_at": iso(now),
                    "expires_at": iso(expires_at),
                    "revoked_at": None,
                }
            )
        )
        return session_id, expires_at

    async def _revoke_session(self, command: RevokeSession) -> None:
        now = iso(self.context.clock())
        await self.context.commit(store.session_revoke(self.company_id, command.session_id, now))

    async def _create_api_key(self, command: CreateApiKey) -> tuple[dict[str, Any], str]:
        self._require()
        beyond = set(command.scopes) - command.creator_scopes
        if beyond:
            raise Forbidden(
                "A key cannot have scopes its creator lacks: " + ", ".join(sorted(beyond))
            )
        key = generate_key(command.type, command.mode)
        shape = parse_key(key)
        assert shape is not None
        row = {
            "id": new_id("key"),
            "company_id": self.company_id,
            "mode": command.mode,
            "name": command.name,
            "type": command.type,
            "prefix": shape.prefix,
            "last4": shape.last4,
            "secret_hash": self.keyring.hash_api_key(key),
            "scopes": orjson.dumps(sorted(set(command.scopes))).decode(),
            "created_by": command.created_by,
            "created_at": iso(self.context.clock()),
            "last_used_at": None,
            "revoked_at": None,
        }
        result = (row, key)
        statements = [store.api_key_insert(row)]
        if command.idempotency is not None:
            statements += command.idempotency.statements(result)
        await self.context.commit(*statements)
        return result

    async def _revoke_api_key(self, command: RevokeApiKey) -> Row:
        now = iso(self.context.clock())
        before = command.key
        after = {**before, "revoked_at": before["revoked_at"] or now}
        statements = [store.api_key_revoke(self.company_id, before["id"], now)]
        if command.idempotency is not None:
            statements += command.idempotency.statements(after)
        rows = await self.context.commit(*statements)
        if not rows[0]:
            raise NotFound("No such API key")
        revoked: Row = {**after, **rows[0][0]}
        return revoked

    def can_passivate(self) -> bool:
        # The futures of in-flight keys live here; passivating would strand their waiters.
        return not self.in_flight and super().can_passivate()

    def _claim_key(self, key: str) -> asyncio.Future[None] | None:
        """Decided in memory: the key is marked in flight before anything is looked up, so a
        duplicate arriving meanwhile waits on it. The stored-response lookup is the caller's,
        outside this turn; the key's row, written in the same unit as the change, is the final
        guard should two requests ever run under one key (a crash between claim and commit)."""
        waiter = self.in_flight.get(key)
        if waiter is not None:
            return waiter
        self.in_flight[key] = asyncio.get_running_loop().create_future()
        return None

    async def _create_payment(self, command: CreatePayment) -> Detached:
        """Check the company's rules now, in order; commit without holding up the mailbox.

        A new payment changes nothing the company actor keeps, so the next command need not
        wait for this commit, and a burst of creates for one merchant shares group commits.
        """
        company = self._require()
        settings = company.settings[command.mode]
        spec = command.spec
        if spec.currency not in settings.supported_currencies:
            raise ValidationFailed(
                [
                    FieldError(
                        "currency",
                        f"{spec.currency} is not supported; supported: "
                        + ", ".join(settings.supported_currencies),
                    )
                ]
            )
        if command.mode == "live" and settings.kyc_status != "VERIFIED":
            raise Forbidden("Live payments need a verified account", code="account_not_verified")
        transition = rules.create(
            spec,
            payment_id=new_id("pay"),
            reference=payment_reference(),
            company_id=company.id,
            mode=command.mode,
            now=self.context.clock(),
        )
        payment = with_customer(transition.payment, self.keyring)
        event_writes, bodies = event_statements(
            [rules.Event(e.type, payment) for e in transition.events], self.public_url
        )
        outcome = Outcome(payment, bodies)
        statements = [payment_insert(payment), *customer_statements(payment), *event_writes]
        if command.idempotency is not None:
            statements += command.idempotency.statements(outcome)
        return Detached(self._commit(outcome, statements))

    async def _commit(self, outcome: Outcome, statements: list[Statement]) -> Outcome:
        await self.context.commit(*statements)
        return outcome

    async def _update_settings(self, command: UpdateSettings) -> Company:
        company = self._require()
        updated = company.with_settings(
            command.mode, replace(company.settings[command.mode], **command.changes)
        )
        now = iso(self.context.clock())
        await self.context.commit(store.company_update(company, updated, now))
        self.company = replace(updated, version=company.version + 1)
        return self.company
