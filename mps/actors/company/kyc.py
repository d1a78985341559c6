"""Identity verification in the company actor: a stored document moves the mode's status, and
a review decides it (mps.domain.kyc). The status lives in the company's settings, which only
this actor writes, so an upload and a review of the same company never interleave: the status
each decides is held from its turn on (mps.actors.company.state.CompanyState.hold_company), and
its commit is detached."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import orjson

from mps.actors.company.audit import commit_held, entry
from mps.actors.company.ledger import require_fresh
from mps.actors.company.state import CompanyState
from mps.actors.idempotency import IdempotentCommand
from mps.actors.runtime import Detached
from mps.domain import kyc as rules
from mps.domain.audit import SYSTEM, AuditContext, AuditEntry
from mps.domain.clock import iso
from mps.domain.company import Company
from mps.domain.kyc import KycDocument, Review
from mps.persistence import kyc_store as store
from mps.persistence.company_store import company_update
from mps.persistence.outbox import event_insert, event_row
from mps.persistence.statements import Statement

__all__ = ["DecideKyc", "RecordKycDocument", "decide", "record_document"]


@dataclass(frozen=True)
class RecordKycDocument(IdempotentCommand):
    """Reply: (the document as stored, the mode's status after it). Its file is in object
    storage already; the row, the status it moves and its audit entry commit together."""

    document: KycDocument
    audit: AuditContext = SYSTEM


@dataclass(frozen=True)
class DecideKyc(IdempotentCommand):
    """Reply: the event's body. A review decides the mode's status (mps.domain.kyc): an
    operator's for live, the sandbox's for test."""

    review: Review
    audit: AuditContext = SYSTEM
    # Committed with the decision: the operator's request marked done, so that a request is
    # carried out once however often it is seen.
    extra: tuple[Statement, ...] = ()


def _decision(
    state: CompanyState, company: Company, review: Review, now: str
) -> tuple[Company, list[Statement], dict[str, Any]]:
    """The company with the review's status, the statements that record it, and its event."""
    settings = company.settings[review.mode]
    decided = company.with_settings(review.mode, replace(settings, kyc_status=review.status))
    status = {
        "object": "kyc",
        "mode": review.mode,
        "status": review.status,
        "reason": review.reason,
        "reviewedAt": now,
    }
    row = event_row(
        company_id=company.id,
        mode=review.mode,
        event_type="kyc.verified" if review.status == "VERIFIED" else "kyc.rejected",
        created_at=now,
        obj=status,
    )
    statements = [
        store.review_insert(company.id, review, now),
        store.documents_decided(company.id, review, now),
        event_insert(row),
    ]
    return decided, statements, orjson.loads(row["data"])


def record_document(state: CompanyState, command: RecordKycDocument) -> Detached:
    """Reply: (the document, the mode's status after it), once committed."""
    require_fresh(state)
    company = state.require()
    document = command.document
    before = company.settings[document.mode].kyc_status
    status, review = rules.after_upload(before, document.mode, document.type)
    now = iso(state.context.clock())
    statements: list[Statement] = [store.document_insert(document)]
    entries: list[AuditEntry] = [
        entry(
            state, command.audit, "kyc.document_uploaded", ("kyc_document", document.id),
            mode=document.mode, type=document.type, sha256=document.sha256,
            sizeBytes=document.size_bytes,
        )
    ]  # fmt: skip
    after = company
    if review is not None:
        after, decision, _event = _decision(state, company, review, now)
        statements += decision
        entries.append(
            entry(state, command.audit, f"kyc.{review.status.lower()}", ("company", company.id),
                  mode=review.mode, reviewedBy=review.reviewed_by)
        )  # fmt: skip
        document = replace(document, status="ACCEPTED", reviewed_at=now)
    elif status != before:
        after = company.with_settings(
            document.mode, replace(company.settings[document.mode], kyc_status=status)
        )
    if after is not company:
        statements.insert(0, company_update(company, after, now))
    result = (document, status)
    if command.idempotency is not None:
        statements += command.idempotency.statements(result)
    undo = state.hold_company(company, after) if after is not company else _nothing

    return commit_held(state, statements, entries, result, undo)


def _nothing() -> None:
    pass


def decide(state: CompanyState, command: DecideKyc) -> Detached:
    """Reply: the decision's event body, once committed."""
    require_fresh(state)
    company = state.require()
    review = command.review
    now = iso(state.context.clock())
    after, statements, event = _decision(state, company, review, now)
    statements = [company_update(company, after, now), *statements, *command.extra]
    if command.idempotency is not None:
        statements += command.idempotency.statements(event)
    audit = entry(
        state, command.audit, f"kyc.{review.status.lower()}", ("company", company.id),
        mode=review.mode, reviewedBy=review.reviewed_by, reason=review.reason,
    )  # fmt: skip
    undo = state.hold_company(company, after)

    return commit_held(state, statements, [audit], event, undo)
