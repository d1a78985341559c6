"""Identity verification (decisions 1, 12) as pure functions: how a company's status in a mode
moves when a document arrives and when a review decides.

Vocabulary:
    UNVERIFIED  nothing submitted yet; live money movement is refused (403
                account_not_verified)
    PENDING     documents submitted, waiting for a review
    VERIFIED    reviewed and accepted: live payments, payouts and cards work
    REJECTED    reviewed and refused; a new document puts it back to PENDING

Test mode verifies itself: one identity document is enough, and the sandbox kinds kyc.verified
and kyc.rejected force either outcome. Live status changes only by an operator's review
(`run.py kyc review`), never by anything a merchant can send.

A document is PENDING until the review of its mode decides (ACCEPTED or REJECTED); a review
decides every PENDING document of its mode at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from mps.errors import Conflict

__all__ = [
    "DOCUMENT_TYPES",
    "IDENTITY_TYPES",
    "STATUSES",
    "KycDocument",
    "Review",
    "after_upload",
    "review",
]

STATUSES = ("UNVERIFIED", "PENDING", "VERIFIED", "REJECTED")
DOCUMENT_TYPES = (
    "passport",
    "national_id",
    "drivers_license",
    "proof_of_address",
    "business_registration",
)
IDENTITY_TYPES = frozenset({"passport", "national_id", "drivers_license"})
DECISIONS = {"approve": "VERIFIED", "reject": "REJECTED"}


@dataclass(frozen=True)
class KycDocument:
    id: str
    company_id: str
    mode: str
    type: str
    status: str  # PENDING | ACCEPTED | REJECTED
    file_name: str
    content_type: str
    size_bytes: int
    sha256: str
    storage_key: str
    # The file's own data key, sealed under the service's encryption key
    # (mps.adapters.storage.sealed).
    sealed_key: str
    uploaded_by: str | None
    created_at: str
    reviewed_at: str | None = None


@dataclass(frozen=True)
class Review:
    """A decision on a mode's status: by an operator (live), the sandbox or an upload (test)."""

    mode: str
    status: str  # VERIFIED | REJECTED
    reason: str | None
    reviewed_by: str  # operator:<name> | sandbox | automatic


def after_upload(status: str, mode: str, document_type: str) -> tuple[str, Review | None]:
    """The mode's status once a document of `document_type` is stored, and the review the
    upload itself amounts to (test mode's identity document), if any."""
    if mode == "test" and document_type in IDENTITY_TYPES:
        return "VERIFIED", Review(mode, "VERIFIED", None, "automatic")
    if status in ("UNVERIFIED", "REJECTED"):
        return "PENDING", None
    return status, None


def review(mode: str, decision: str, reason: str | None, reviewer: str, documents: int) -> Review:
    """An operator's decision on the live status; test mode is decided by its own rules.

    There must be something to review: a company that submitted nothing cannot be verified.
    """
    if mode != "live":
        msg = "Operators review live mode only; test mode verifies on upload or by the sandbox"
        raise Conflict(msg, code="invalid_state")
    if decision not in DECISIONS:
        msg = f"decision must be one of {', '.join(DECISIONS)}"
        raise ValueError(msg)
    if documents == 0:
        raise Conflict("The company has submitted no live documents", code="invalid_state")
    if decision == "reject" and not reason:
        msg = "A rejection needs a reason the merchant can act on"
        raise ValueError(msg)
    return Review(mode, DECISIONS[decision], reason, reviewer)
