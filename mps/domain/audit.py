"""The audit trail (decisions 9): entries and the hash chain that makes tampering evident.

Each company's entries form one chain, in `seq` order. An entry's hash is the SHA-256 of its
canonical encoding: the JSON of every field but the hash itself (the previous entry's hash
included), keys sorted, no spaces, UTF-8. Changing, removing or inserting a stored entry
therefore breaks the chain at that entry, and `verify` names the first one that does not match.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

__all__ = [
    "AuditContext",
    "AuditEntry",
    "AuditHead",
    "Verdict",
    "canonical",
    "chained",
    "link",
    "verify",
]


@dataclass(frozen=True)
class AuditContext:
    """Who asked, from where: taken from the request that makes the change."""

    actor_type: str  # user | api_key | system
    actor_id: str | None = None
    ip: str | None = None
    request_id: str | None = None


SYSTEM = AuditContext("system")


@dataclass(frozen=True)
class AuditEntry:
    id: str
    at: str
    action: str
    context: AuditContext
    target_type: str | None = None
    target_id: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    # Set when the entry joins its company's chain.
    seq: int = 0
    prev_hash: str | None = None
    hash: str = ""


@dataclass(frozen=True)
class AuditHead:
    """The end of a company's chain: its last entry's number and hash (0 and None when empty)."""

    seq: int = 0
    hash: str | None = None


def chained(entry: AuditEntry) -> dict[str, Any]:
    """What the entry's hash covers, under the names an export shows: every field but the hash
    itself."""
    return {
        "id": entry.id,
        "at": entry.at,
        "actor": {"type": entry.context.actor_type, "id": entry.context.actor_id},
        "action": entry.action,
        "target": {"type": entry.target_type, "id": entry.target_id},
        "details": entry.details,
        "ip": entry.context.ip,
        "requestId": entry.context.request_id,
        "seq": entry.seq,
        "prevHash": entry.prev_hash,
    }


def canonical(entry: AuditEntry) -> bytes:
    return orjson.dumps(chained(entry), option=orjson.OPT_SORT_KEYS)


def _hash(entry: AuditEntry) -> str:
    return hashlib.sha256(canonical(entry)).hexdigest()


def link(entries: Iterable[AuditEntry], head: AuditHead) -> tuple[list[AuditEntry], AuditHead]:
    """The entries numbered and hashed onto the chain ending at `head`, and the new head."""
    linked = []
    for entry in entries:
        numbered = replace(entry, seq=head.seq + 1, prev_hash=head.hash)
        numbered = replace(numbered, hash=_hash(numbered))
        linked.append(numbered)
        head = AuditHead(numbered.seq, numbered.hash)
    return linked, head


@dataclass
class Verdict:
    valid: bool = True
    checked: int = 0
    first_broken_id: str | None = None
    head: AuditHead = field(default_factory=AuditHead)


def verify(entries: Iterable[AuditEntry], verdict: Verdict | None = None) -> Verdict:
    """Check `entries` (in seq order, following `verdict`'s head when it is the verdict of the
    entries before them) and return the verdict so far: a chunk at a time, so a long chain is
    verified in constant memory."""
    verdict = verdict or Verdict()
    for entry in entries:
        if not verdict.valid:
            break
        verdict.checked += 1
        expected_seq = verdict.head.seq + 1
        if (
            entry.seq != expected_seq
            or entry.prev_hash != verdict.head.hash
            or entry.hash != _hash(entry)
        ):
            verdict.valid = False
            verdict.first_broken_id = entry.id
            break
        verdict.head = AuditHead(entry.seq, entry.hash)
    return verdict
