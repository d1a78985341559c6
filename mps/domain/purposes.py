"""What values are sealed for (`mps.auth.keyring.Keyring.seal`). A purpose names the key derived
for it and is bound to the value as associated data, so a value sealed for one use never opens
as another."""

from __future__ import annotations

__all__ = [
    "BANK_ACCOUNT_NUMBER",
    "CARD_CVC",
    "CARD_NUMBER",
    "IDEMPOTENT_RESPONSE",
    "KYC_DOCUMENT_KEY",
    "WEBHOOK_SECRET",
]

BANK_ACCOUNT_NUMBER = "bank-account-number"
CARD_NUMBER = "card-number"
CARD_CVC = "card-cvc"
IDEMPOTENT_RESPONSE = "idempotent-response"
# The data key a document's object is sealed with (mps.adapters.storage.sealed).
KYC_DOCUMENT_KEY = "kyc-document"
WEBHOOK_SECRET = "webhook-secret"  # noqa: S105 - a purpose, not a secret
