"""Secrets derived from the configured master secrets, one per purpose.

Codes and API keys are stored only as keyed hashes (HMAC-SHA256 under a purpose key), so a copy
of the database alone does not let anyone test guesses offline.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

__all__ = ["Keyring"]


def _derive(master: bytes, purpose: str) -> bytes:
    return hmac.new(master, b"mps/" + purpose.encode(), hashlib.sha256).digest()


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

    def hash_api_key(self, key: str) -> str:
        return hmac.new(
            _derive(self.session_secret, "api-key"), key.encode(), hashlib.sha256
        ).hexdigest()
