"""Secrets derived from the configured master secrets, one per purpose.

Codes and API keys are stored only as keyed hashes (HMAC-SHA256 under a purpose key), so a copy
of the database alone does not let anyone test guesses offline.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import os
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Keyring:
    session_secret: bytes
    encryption_key: bytes

    @property
    def jwt_key(self) -> bytes:
        return _derive(self.session_secret, "jwt")

    def hash_code(self, login_id: str, code: str) -> str:
        return hmac.new(
            _derive(self.session_secret, "otp"), f"{login_id}:{code}".encode(), hashlib.sha256
        ).hexdigest()

    def customer_id(self, company_id: str, mode: str, email: str | None, phone: str | None) -> str:
        """The id of the customer an email (or, without one, a phone) names in a company's mode.

        Derived rather than drawn so that concurrent payments meeting the same new customer
        agree on its row; keyed, so it is as opaque as a random id.
        """
        key = f"email:{email}" if email else f"phone:{phone}"
        digest = hmac.new(
            _derive(self.session_secret, "customer"),
            f"{company_id}|{mode}|{key}".encode(),
            hashlib.sha256,
        ).digest()
        return "cus_" + _base62(digest)[:24]

    def seal(self, plaintext: bytes, purpose: str) -> str:
        """AES-256-GCM under a key for `purpose`; the purpose is also bound as associated data,
        so a value sealed for one use cannot be opened as another."""
        nonce = os.urandom(12)
        sealed = _cipher(self.encryption_key, purpose).encrypt(nonce, plaintext, purpose.encode())
        return "v1:" + base64.b64encode(nonce + sealed).decode()

    def unseal(self, token: str, purpose: str) -> bytes:
        raw = base64.b64decode(token.removeprefix("v1:"))
        return _cipher(self.encryption_key, purpose).decrypt(raw[:12], raw[12:], purpose.encode())

    def hash_api_key(self, key: str) -> str:
        return hmac.new(
            _derive(self.session_secret, "api-key"), key.encode(), hashlib.sha256
        ).hexdigest()
