"""Signing webhook deliveries, and checking a signature on the merchant's side.

Every delivery carries two signatures made with the same key, so a receiver can use either:

- `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(key, "{t}.{body}")>`, our own
  header, checked by `verify_signature`;
- the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`), so
  any Standard Webhooks library verifies our deliveries without code of ours.

The timestamp is inside the signed bytes so a captured delivery cannot be replayed later with a
fresh one; the body is signed exactly as sent, because any re-serialisation (key order, spaces)
would change the bytes. While a secret is being rotated both secrets sign (the new one first),
so a receiver keeps verifying whichever of the two it holds during the overlap.

A secret is `whsec_` and the padded standard base64 of 32 random bytes: the Standard Webhooks
format, so the same string can be handed to their libraries as it is.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Sequence
from secrets import token_bytes

__all__ = [
    "SignatureError",
    "new_secret",
    "secret_key",
    "sign",
    "verify_signature",
]

SIGNATURE_HEADER = "X-Service-Signature"
_PREFIX = "whsec_"
_KEY_BYTES = 32


class SignatureError(ValueError):
    """A delivery's signature header does not prove it came from us, now."""


def new_secret() -> str:
    """A fresh signing secret: `whsec_` + base64 of 32 random bytes."""
    return _PREFIX + base64.b64encode(token_bytes(_KEY_BYTES)).decode("ascii")


def secret_key(secret: str) -> bytes:
    """The 32-byte HMAC key in `secret`; ValueError if it is not exactly our format.

    Strict (padding, alphabet, length, canonical encoding) so that a secret that was truncated
    or mangled when copied fails here, loudly, rather than as every signature not matching.
    The message never repeats the secret.
    """
    if not secret.startswith(_PREFIX):
        raise ValueError(f"a webhook secret must start with {_PREFIX!r}")
    encoded = secret.removeprefix(_PREFIX)
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("a webhook secret must be whsec_ and standard base64") from None
    if len(key) != _KEY_BYTES or base64.b64encode(key).decode("ascii") != encoded:
        raise ValueError(f"a webhook secret must encode exactly {_KEY_BYTES} bytes")
    return key


def sign(body: bytes, secrets: Sequence[str], *, timestamp: int, message_id: str) -> dict[str, str]:
    """The four signature headers of one delivery of `body`.

    `secrets` is the endpoint's current secret, then, during a rotation's overlap, the previous
    one. `message_id` is the event id, which stays the same across retries so receivers can
    deduplicate on it.
    """
    if not secrets:
        raise ValueError("at least one secret is needed to sign")
    keys = [secret_key(s) for s in secrets]
    t = str(timestamp)
    ours = f"{t}.".encode() + body
    standard = f"{message_id}.{t}.".encode() + body
    v1 = ",".join(f"v1={_hmac(key, ours).hex()}" for key in keys)
    standard_sigs = " ".join(
        "v1," + base64.b64encode(_hmac(key, standard)).decode("ascii") for key in keys
    )
    return {
        SIGNATURE_HEADER: f"t={t},{v1}",
        "webhook-id": message_id,
        "webhook-timestamp": t,
        "webhook-signature": standard_sigs,
    }


def verify_signature(
    payload: bytes | str,
    header: str,
    secret: str,
    tolerance: int = 300,
    *,
    now: float | None = None,
) -> int:
    """Check an `X-Service-Signature` header against the raw body; return its timestamp.

    Accepts if any `v1` matches (there are two during a secret rotation), and only if `t` is
    within `tolerance` seconds of `now` (default: the clock), either way, which bounds how long
    a captured delivery can be replayed. Raises SignatureError otherwise; ValueError if `secret`
    itself is malformed. Pass the body exactly as received: a str is encoded as UTF-8, but JSON
    parsed and dumped again will not verify.

    A receiver in aiohttp. Deliveries are at least once, so it deduplicates on the event id;
    `sequence` grows by one per event of a company and mode, so a jump means events were missed
    (or are still being retried), which `GET /api/v1/merchant/events` lists::

        async def receive(request: web.Request) -> web.Response:
            body = await request.read()  # the raw bytes, before any JSON parsing
            try:
                verify_signature(body, request.headers.get("X-Service-Signature", ""), SECRET)
            except SignatureError as error:
                raise web.HTTPBadRequest(text=str(error)) from None
            event = json.loads(body)
            if not await remember_once(event["id"]):  # a retry of one already handled
                return web.Response(status=204)
            last = await last_sequence(event["livemode"])
            if last is not None and event["sequence"] > last + 1:
                schedule_catch_up(after=last)  # GET /api/v1/merchant/events
            await handle(event)  # and store event["sequence"] as the last seen
            return web.Response(status=204)
    """
    timestamp, signatures = _parse(header)
    body = payload.encode("utf-8") if isinstance(payload, str) else payload
    expected = _hmac(secret_key(secret), f"{timestamp}.".encode() + body).hex().encode("ascii")
    # Every candidate is compared, in constant time, so timing tells nothing about which
    # or how much of one matched.
    matched = False
    for candidate in signatures:
        matched |= hmac.compare_digest(expected, candidate.encode("utf-8"))
    if not matched:
        raise SignatureError("no v1 signature matches the body and secret")
    clock = time.time() if now is None else now
    if timestamp < clock - tolerance:
        raise SignatureError(f"the signature's timestamp is more than {tolerance} s old")
    if timestamp > clock + tolerance:
        raise SignatureError(f"the signature's timestamp is more than {tolerance} s ahead")
    return timestamp


def _parse(header: str) -> tuple[int, list[str]]:
    """`t` and every `v1` of a header; other schemes (`v0`, a future `v2`) are ignored."""
    timestamp: int | None = None
    signatures: list[str] = []
    for part in header.split(","):
        name, sep, value = part.strip().partition("=")
        if not sep or not name or not value:
            raise SignatureError(f"malformed {SIGNATURE_HEADER} header: expected t=...,v1=...")
        if name == "t":
            if timestamp is not None:
                raise SignatureError(f"malformed {SIGNATURE_HEADER} header: more than one t")
            if not (value.isascii() and value.isdigit()):
                raise SignatureError(f"malformed {SIGNATURE_HEADER} header: t is not a number")
            timestamp = int(value)
        elif name == "v1":
            signatures.append(value)
    if timestamp is None:
        raise SignatureError(f"{SIGNATURE_HEADER} header has no timestamp (t)")
    if not signatures:
        raise SignatureError(f"{SIGNATURE_HEADER} header has no v1 signature")
    return timestamp, signatures


def _hmac(key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hashlib.sha256).digest()
