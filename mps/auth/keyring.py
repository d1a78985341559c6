"""Secrets derived from the configured master secrets, one per purpose.

Codes and API keys are stored only as keyed hashes (HMAC-SHA256 under a purpose key), so a copy
of the database alone does not let anyone test guesses offline.

Rotation (SECURITY.md says how to rotate each secret). While a previous session secret or
encryption key is configured, everything is still written under the current one (sessions
signed, codes and API keys hashed, data sealed) and anything presented is checked against the
current one first, then the previous one: `session_keys`, `code_hashes`, `api_key_hashes` and
`unseal`. Customer ids are the exception: they name stored rows, so they are keyed by the id
key (`MPS_ID_KEY`), which is never rotated and defaults to the session secret, the key that has
named customers since the first start.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import os
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["Keyring"]


# Purpose keys and ciphers are derived once per (secret, purpose), not on every call: a handful
# of purposes, each used on every request of its kind.
@functools.lru_cache(maxsize=64)
def _derive(master: bytes, purpose: str) -> bytes:
    return hmac.new(master, b"mps/" + purpose.encode(), hashlib.sha256).digest()


@functools.lru_cache(maxsize=64)
def _cipher(master: bytes, purpose: str) -> AESGCM:
    return AESGCM(_derive(master, f"seal/{purpose}"))


_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _base62(data: bytes) -> str:
    number = int.from_bytes(data, "big")
    out = []
    while number:
        number, digit = divmod(number, 62)
        out.append(_ALPHABET[digit])
    return "".join(out)


def _hash(master: bytes, purpose: str, text: str) -> str:
    return hmac.new(_derive(master, purpose), text.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Keyring:
    session_secret: bytes
    encryption_key: bytes
    # Set only during a rotation: still accepted, never used to write.
    session_secret_previous: bytes | None = None
    encryption_key_previous: bytes | None = None
    # Keys customer ids; never rotated. Empty: the session secret (as before it existed).
    id_key: bytes = b""

    @property
    def _session_secrets(self) -> tuple[bytes, ...]:
        previous = self.session_secret_previous
        return (self.session_secret, previous) if previous else (self.session_secret,)

    @property
    def jwt_key(self) -> bytes:
        """The key sessions are signed with."""
        return _derive(self.session_secret, "jwt")

    @property
    def session_keys(self) -> tuple[bytes, ...]:
        """The keys a session's signature is checked against, current first."""
        return tuple(_derive(secret, "jwt") for secret in self._session_secrets)

    def hash_code(self, login_id: str, code: str) -> str:
        """The hash a new sign-in code is stored as."""
        return _hash(self.session_secret, "otp", f"{login_id}:{code}")

    def code_hashes(self, login_id: str, code: str) -> tuple[str, ...]:
        """The hashes a presented code may be stored as, current first."""
        return tuple(_hash(s, "otp", f"{login_id}:{code}") for s in self._session_secrets)

    def customer_id(self, company_id: str, mode: str, email: str | None, phone: str | None) -> str:
        """The id of the customer an email (or, without one, a phone) names in a company's mode.

        Derived rather than drawn so that concurrent payments meeting the same new customer
        agree on its row; keyed, so it is as opaque as a random id. Keyed by the id key, never
        by a rotated secret: the id names the customer's row for good.
        """
        key = f"email:{email}" if email else f"phone:{phone}"
        digest = hmac.new(
            _derive(self.id_key or self.session_secret, "customer"),
            f"{company_id}|{mode}|{key}".encode(),
            hashlib.sha256,
        ).digest()
        return "cus_" + _base62(digest)[:24]

    def hash_invitation_token(self, token: str) -> str:
        """The keyed hash an invitation's token is stored as (the token itself is only in the
        emailed link). Keyed by the id key, so rotating the session secret keeps links valid."""
        return _hash(self.id_key or self.session_secret, "invitation", token)

    def hash_card_number(self, number: str) -> str:
        """The keyed hash that keeps issued card numbers unique without storing them in the
        clear (the number itself is sealed)."""
        return _hash(self.id_key or self.session_secret, "card-number", number)

    def fingerprint(self, data: bytes) -> str:
        """A keyed hash of a request, for Idempotency-Key records (mps.http.idempotency). Keyed
        by the id key, so records made before a session-secret rotation still match."""
        return hmac.new(
            _derive(self.id_key or self.session_secret, "request-fingerprint"), data, hashlib.sha256
        ).hexdigest()

    def invoice_token(self, invoice_id: str) -> str:
        """The token of an invoice's hosted link (`/i/{id}?t={token}`): a keyed hash of its id,
        so it is stored nowhere and cannot be guessed (143 bits). Keyed by the id key, never by
        a rotated secret, so the links already emailed keep working."""
        digest = hmac.new(
            _derive(self.id_key or self.session_secret, "invoice-link"),
            invoice_id.encode(),
            hashlib.sha256,
        ).digest()
        return _base62(digest)[:24]

    def invoice_token_valid(self, invoice_id: str, token: str) -> bool:
        # As bytes: compare_digest refuses str with characters beyond ASCII, and a link can hold
        # anything.
        return hmac.compare_digest(self.invoice_token(invoice_id).encode(), token.encode())

    def seal(self, plaintext: bytes, purpose: str) -> str:
        """AES-256-GCM under a key for `purpose`; the purpose is also bound as associated data,
        so a value sealed for one use cannot be opened as another. Always the current key."""
        nonce = os.urandom(12)
        sealed = _cipher(self.encryption_key, purpose).encrypt(nonce, plaintext, purpose.encode())
        return "v1:" + base64.b64encode(nonce + sealed).decode()

    def unseal(self, token: str, purpose: str) -> bytes:
        """Open a sealed value with the current key, else the previous one while it is set;
        `cryptography.exceptions.InvalidTag` when neither opens it."""
        return self._open(token, purpose)[0]

    def reseal(self, token: str, purpose: str) -> str | None:
        """`token` sealed afresh with the current key when only the previous key opens it; None
        when the current key opens it already. `InvalidTag` when neither does."""
        plain, current = self._open(token, purpose)
        return None if current else self.seal(plain, purpose)

    def _open(self, token: str, purpose: str) -> tuple[bytes, bool]:
        """The plaintext, and whether the current key (rather than the previous) opened it."""
        raw = base64.b64decode(token.removeprefix("v1:"))
        nonce, sealed, aad = raw[:12], raw[12:], purpose.encode()
        try:
            return _cipher(self.encryption_key, purpose).decrypt(nonce, sealed, aad), True
        except InvalidTag:
            if not self.encryption_key_previous:
                raise
            previous = _cipher(self.encryption_key_previous, purpose)
            return previous.decrypt(nonce, sealed, aad), False

    def hash_api_key(self, key: str) -> str:
        """The hash a new API key is stored as."""
        return _hash(self.session_secret, "api-key", key)

    def api_key_hashes(self, key: str) -> tuple[str, ...]:
        """The hashes a presented API key may be stored as, current first."""
        return tuple(_hash(secret, "api-key", key) for secret in self._session_secrets)
