"""The company actor: one per company, serializing changes to its settings, members and keys.

It loads the company's snapshot when activated and applies each command in turn: compute the new
state with pure rules, commit it (with its events) through the persistence actor, and only then
adopt it and reply. A command that fails leaves the in-memory state as it was.
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
from mps.errors import FieldError, Forbidden, NotFound, Unprocessable, ValidationFailed
from mps.persistence.payment_store import customer_statements, event_statements, payment_insert
from mps.persistence.queries import companies
from mps.persistence.statements import Row, Statement, insert, versioned_update

__all__ = [
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


@dataclass(frozen=True)
class RevokeApiKey:
    """Reply: the key's row after revocation."""

    key_id: str


@dataclass(frozen=True)
class CreatePayment:
    """Reply: an Outcome with the new PENDING payment and its payment.created event."""

    mode: str
    spec: NewPayment
    idempotency: IdempotencyRecord | None = None


@dataclass(frozen=True)
class ClaimKey:
    """Reply: a stored response to replay (a row), None to proceed (the key is now in flight),
    or an asyncio future to await while another request holds the key. 422 on a mismatch."""

    key: str
    fingerprint: str


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

    def _require(self) -> Company:
        if self.company is None:
            raise NotFound("No such company")
        return self.company

    async def receive(self, message: Any) -> Any:
        match message:
            case CreateCompany():
                return await self._create(message)
            case OpenSession():
                return await self._open_session(message)
            case RevokeSession():
                return await self._revoke_session(message)
            case CreateApiKey():
                return await self._create_api_key(message)
            case RevokeApiKey():
                return await self._revoke_api_key(message)
            case ClaimKey():
                return await self._claim_key(message)
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
        email = command.owner_email
        existing = await self.context.database.fetchval(
            "SELECT id FROM users WHERE email = $1", email
        )
        user_id = existing or new_id("usr")
        statements = [
            insert(
                "companies",
                {
                    "id": company.id,
                    "version": 1,
                    "name": company.name,
                    "created_at": now,
                    "updated_at": now,
                    "data": orjson.dumps(company.data_json()).decode(),
                },
            ),
            # A concurrent signup may have created the same user first: keep theirs.
            Statement(
                "INSERT INTO users (id, email, name, created_at) VALUES ($1, $2, $3, $4) "
                "ON CONFLICT (email) DO NOTHING",
                (user_id, email, command.owner_name, now),
            ),
            Statement(
                "INSERT INTO members (company_id, user_id, role_id, created_at) "
                "SELECT $1, id, $2, $3 FROM users WHERE email = $4 RETURNING user_id",
                (company.id, OWNER_ROLE, now, email),
                expect_rows=1,
            ),
        ]
        rows = await self.context.commit(*statements)
        self.company = company
        owner: str = rows[2][0]["user_id"]
        return owner

    async def _open_session(self, command: OpenSession) -> tuple[str, Any]:
        self._require()
        member = await self.context.database.fetchval(
            "SELECT role_id FROM members WHERE company_id = $1 AND user_id = $2",
            self.company_id,
            command.user_id,
        )
        if member is None:
            raise Forbidden("You are not a member of this company", code="not_a_member")
        now = self.context.clock()
        session_id = new_id("ses")
        expires_at = now + SESSION_TTL
        await self.context.commit(
            insert(
                "sessions",
                {
                    "id": session_id,
                    "user_id": command.user_id,
                    "company_id": self.company_id,
                    "mode": command.mode,
                    "created_at": iso(now),
                    "expires_at": iso(expires_at),
                    "revoked_at": None,
                },
            )
        )
        return session_id, expires_at

    async def _revoke_session(self, command: RevokeSession) -> None:
        await self.context.commit(
            Statement(
                "UPDATE sessions SET revoked_at = $1 WHERE id = $2 AND company_id = $3 "
                "AND revoked_at IS NULL",
                (iso(self.context.clock()), command.session_id, self.company_id),
            )
        )

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
        await self.context.commit(insert("api_keys", row))
        return row, key

    async def _revoke_api_key(self, command: RevokeApiKey) -> dict[str, Any]:
        now = iso(self.context.clock())
        rows = await self.context.commit(
            Statement(
                "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) "
                "WHERE id = $2 AND company_id = $3 RETURNING *",
                (now, command.key_id, self.company_id),
            )
        )
        if not rows[0]:
            raise NotFound("No such API key")
        return rows[0][0]

    def can_passivate(self) -> bool:
        # The futures of in-flight keys live here; passivating would strand their waiters.
        return not self.in_flight and super().can_passivate()

    async def _claim_key(self, command: ClaimKey) -> Row | asyncio.Future[None] | None:
        waiter = self.in_flight.get(command.key)
        if waiter is not None:
            return waiter
        row = await self.context.database.fetchrow(
            "SELECT * FROM idempotency_keys WHERE company_id = $1 AND idem_key = $2 "
            "AND expires_at > $3",
            self.company_id,
            command.key,
            iso(self.context.clock()),
        )
        if row is not None:
            if row["fingerprint"] != command.fingerprint:
                raise Unprocessable(
                    "This Idempotency-Key was used with a different request; use a new key "
                    "for a new request"
                )
            return row
        self.in_flight[command.key] = asyncio.get_running_loop().create_future()
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
            statements.append(command.idempotency.statement(outcome))
        return Detached(self._commit(outcome, statements))

    async def _commit(self, outcome: Outcome, statements: list[Statement]) -> Outcome:
        await self.context.commit(*statements)
        return outcome

    async def _update_settings(self, command: UpdateSettings) -> Company:
        company = self._require()
        updated = company.with_settings(
            command.mode, replace(company.settings[command.mode], **command.changes)
        )
        await self.context.commit(
            versioned_update(
                "companies",
                "id",
                company.id,
                company.version,
                {
                    "updated_at": iso(self.context.clock()),
                    "data": orjson.dumps(updated.data_json()).decode(),
                },
            )
        )
        self.company = replace(updated, version=company.version + 1)
        return self.company
