"""Webhook signatures (mps.webhooks.signing): our header checked by an HMAC written here, the
Standard Webhooks headers checked by the `standardwebhooks` library, rotation, and rejections."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from mps.webhooks import SignatureError, sign, verify_signature
from mps.webhooks.signing import new_secret, secret_key

BODY = b'{"id":"evt_1","type":"payment.succeeded","sequence":7,"data":{"object":{}}}'
EVENT_ID = "evt_1"
NOW = 1_750_000_000


def _independent_v1(secret: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    return hmac.new(key, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def test_sign_returns_exactly_the_four_headers_when_given_one_secret() -> None:
    # given
    secret = new_secret()

    # when
    headers = sign(BODY, [secret], timestamp=NOW, message_id=EVENT_ID)

    # then
    assert set(headers) == {
        "X-Service-Signature",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
    }
    assert headers["webhook-id"] == EVENT_ID
    assert headers["webhook-timestamp"] == str(NOW)


def test_service_signature_matches_an_independent_hmac_when_computed_in_the_test() -> None:
    # given
    secret = new_secret()

    # when
    header = sign(BODY, [secret], timestamp=NOW, message_id=EVENT_ID)["X-Service-Signature"]

    # then
    assert header == f"t={NOW},v1={_independent_v1(secret, NOW, BODY)}"


def test_verify_signature_returns_the_timestamp_when_the_header_is_genuine() -> None:
    # given
    secret = new_secret()
    header = sign(BODY, [secret], timestamp=NOW, message_id=EVENT_ID)["X-Service-Signature"]

    # when
    timestamp = verify_signature(BODY, header, secret, now=NOW + 10)

    # then
    assert timestamp == NOW


def test_verify_signature_accepts_a_str_payload_when_it_is_the_body_decoded() -> None:
    # given
    secret = new_secret()
    body = '{"name":"Café"}'.encode()
    header = sign(body, [secret], timestamp=NOW, message_id=EVENT_ID)["X-Service-Signature"]

    # when
    timestamp = verify_signature(body.decode(), header, secret, now=NOW)

    # then
    assert timestamp == NOW


def test_standard_webhooks_headers_verify_with_the_standardwebhooks_library_when_current() -> None:
    # given: the library checks the timestamp against its own clock
    secret = new_secret()
    now = int(time.time())

    # when
    headers = sign(BODY, [secret], timestamp=now, message_id=EVENT_ID)

    # then
    assert Webhook(secret).verify(BODY, headers) == {
        "id": "evt_1",
        "type": "payment.succeeded",
        "sequence": 7,
        "data": {"object": {}},
    }


def test_standard_webhooks_library_rejects_the_headers_when_the_body_is_tampered() -> None:
    # given
    secret = new_secret()
    headers = sign(BODY, [secret], timestamp=int(time.time()), message_id=EVENT_ID)

    # when / then
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(BODY.replace(b"7", b"8"), headers)


def test_service_signature_carries_both_v1_values_new_first_when_two_secrets_sign() -> None:
    # given
    new, old = new_secret(), new_secret()

    # when
    header = sign(BODY, [new, old], timestamp=NOW, message_id=EVENT_ID)["X-Service-Signature"]

    # then
    assert header == (
        f"t={NOW},v1={_independent_v1(new, NOW, BODY)},v1={_independent_v1(old, NOW, BODY)}"
    )


@pytest.mark.parametrize("which", ["new", "old"])
def test_verify_signature_accepts_either_secret_when_two_secrets_sign(which: str) -> None:
    # given
    new, old = new_secret(), new_secret()
    header = sign(BODY, [new, old], timestamp=NOW, message_id=EVENT_ID)["X-Service-Signature"]

    # when
    timestamp = verify_signature(BODY, header, new if which == "new" else old, now=NOW)

    # then
    assert timestamp == NOW


@pytest.mark.parametrize("which", ["new", "old"])
def test_standard_webhooks_library_accepts_either_secret_when_two_secrets_sign(which: str) -> None:
    # given
    new, old = new_secret(), new_secret()
    headers = sign(BODY, [new, old], timestamp=int(time.time()), message_id=EVENT_ID)

    # when
    payload = Webhook(new if which == "new" else old).verify(BODY, headers, json_parse=False)

    # then
    assert payload is None  # verified; with json_parse=False it returns nothing
    assert len(headers["webhook-signature"].split(" ")) == 2


def test_verify_signature_rejects_the_header_when_the_body_is_tampered() -> None:
    # given
    secret = new_secret()
    header = sign(BODY, [secret], timestamp=NOW, message_id=EVENT_ID)["X-Service-Signature"]

    # when / then
    with pytest.raises(SignatureError, match="no v1 signature matches"):
        verify_signature(BODY + b" ", header, secret, now=NOW)


def test_verify_signature_rejects_the_header_when_the_secret_is_another() -> None:
    # given
    header = sign(BODY, [new_secret()], timestamp=NOW, message_id=EVENT_ID)["X-Service-Signature"]

    # when / then
    with pytest.raises(SignatureError, match="no v1 signature matches"):
        verify_signature(BODY, header, new_secret(), now=NOW)


def test_verify_signature_rejects_the_header_when_the_timestamp_is_too_old() -> None:
    # given
    secret = new_secret()
    header = sign(BODY, [secret], timestamp=NOW, message_id=EVENT_ID)["X-Service-Signature"]

    # when / then
    assert verify_signature(BODY, header, secret, now=NOW + 300) == NOW
    with pytest.raises(SignatureError, match="old"):
        verify_signature(BODY, header, secret, now=NOW + 301)


def test_verify_signature_rejects_the_header_when_the_timestamp_is_in_the_future() -> None:
    # given
    secret = new_secret()
    header = sign(BODY, [secret], timestamp=NOW, message_id=EVENT_ID)["X-Service-Signature"]

    # when / then
    assert verify_signature(BODY, header, secret, tolerance=60, now=NOW - 60) == NOW
    with pytest.raises(SignatureError, match="ahead"):
        verify_signature(BODY, header, secret, tolerance=60, now=NOW - 61)


def test_verify_signature_rejects_a_replay_when_the_timestamp_is_changed() -> None:
    # given: an old genuine delivery whose t an attacker moves to now
    secret = new_secret()
    header = sign(BODY, [secret], timestamp=NOW, message_id=EVENT_ID)["X-Service-Signature"]
    replayed = header.replace(f"t={NOW}", f"t={NOW + 3600}")

    # when / then
    with pytest.raises(SignatureError, match="no v1 signature matches"):
        verify_signature(BODY, replayed, secret, now=NOW + 3600)


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("", "malformed"),
        ("garbage", "malformed"),
        ("t=1750000000", "no v1"),
        ("v1=abc", "no timestamp"),
        ("t=,v1=abc", "malformed"),
        ("t=abc,v1=abc", "not a number"),
        ("t=-5,v1=abc", "not a number"),
        ("t=1,t=2,v1=abc", "more than one t"),
        ("t=1750000000,,v1=abc", "malformed"),
        ("t=1750000000;v1=abc", "not a number"),
        ("t=1750000000,v0=abc", "no v1"),
    ],
)
def test_verify_signature_rejects_the_header_when_it_is_malformed(
    header: str, message: str
) -> None:
    # given
    secret = new_secret()

    # when / then
    with pytest.raises(SignatureError, match=message):
        verify_signature(BODY, header, secret, now=NOW)


def test_verify_signature_ignores_unknown_schemes_when_a_v1_matches() -> None:
    # given
    secret = new_secret()
    header = sign(BODY, [secret], timestamp=NOW, message_id=EVENT_ID)["X-Service-Signature"]

    # when
    timestamp = verify_signature(BODY, f"{header}, v2=future", secret, now=NOW)

    # then
    assert timestamp == NOW


def test_new_secret_is_whsec_and_padded_base64_of_32_bytes_when_made() -> None:
    # when
    secret = new_secret()

    # then
    assert secret.startswith("whsec_")
    assert len(secret) == len("whsec_") + 44
    assert secret.endswith("=")
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) == 32
    assert secret_key(secret) == base64.b64decode(secret.removeprefix("whsec_"))
    assert new_secret() != secret


@pytest.mark.parametrize(
    "secret",
    [
        "",
        "whsec_",
        base64.b64encode(bytes(32)).decode(),  # no prefix
        "sk_" + base64.b64encode(bytes(32)).decode(),
        "whsec_" + base64.b64encode(bytes(32)).decode().rstrip("="),  # padding dropped
        "whsec_" + base64.b64encode(bytes(16)).decode(),  # too short a key
        "whsec_" + base64.b64encode(bytes(33)).decode(),  # too long a key
        "whsec_" + base64.urlsafe_b64encode(b"\xff" * 32).decode(),  # URL-safe alphabet
        "whsec_" + base64.b64encode(bytes(32)).decode() + " ",
        "whsec_" + base64.b64encode(bytes(32)).decode()[:-2] + "B=",  # non-canonical bits
    ],
)
def test_secret_key_raises_value_error_when_the_secret_is_malformed(secret: str) -> None:
    # when / then
    with pytest.raises(ValueError, match="webhook secret"):
        secret_key(secret)


def test_sign_raises_value_error_when_no_secret_is_given() -> None:
    # when / then
    with pytest.raises(ValueError, match="at least one secret"):
        sign(BODY, [], timestamp=NOW, message_id=EVENT_ID)
